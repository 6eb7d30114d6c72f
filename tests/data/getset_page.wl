seed 7
connections 2
pipeline 32
getset 50000 key=k:{zipf:50000:0.9:5} size=uniform(100,600)
phase second_half
getset 50000 key=k:{zipf:50000:0.9:5} size=uniform(100,600)
