# every statement and option kind, small counts
connections 2
pipeline 8
seed 42
phase warm
set 3 key=w:{i:4} size=10 flags=7 ttl=60
add 2 key=a:{i%3}:{rand:5:2} size=uniform(1,100) noreply
replace 2 key=r{i} size=choice(1,10,100)
append 1 key=w:0000 size=3
prepend 1 key=w:0001 size=fill(3)
set 1 key=w:0002 size=over(4)
repeat 2 {
  get 2 key=w:{i:4}
  gets 1 key=w:{rand:3:4}
  repeat 3 {
    incr 1 key=n by=5
    decr 1 key=n by=1 noreply
  }
  sleep 1
}
touch 2 key=w:{i:4} ttl=-1
delete 1 key=w:0000 noreply
phase end
