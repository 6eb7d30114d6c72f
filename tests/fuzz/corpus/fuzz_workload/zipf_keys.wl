seed 3
phase p
set 100 key=z:{zipf:1000:1.2} size=uniform(10,100)
get 50 key=z:{zipf:1000:1.2:6}
