# Hit ratio 2: two populations interleaved, 4:1. A hot population of
# 40,000 small items (Zipf 1.0, 100..400 bytes) and a colder population of
# 60,000 larger items (Zipf 0.8, lognormal around 2.2 KB, per key), which
# compete for the cache's pages across slab classes: the slab ladder and
# page moves decide how much memory each population gets.
seed 2
connections 4
pipeline 64
repeat 50000 {
  getset 8 key=hot:{zipf:40000:1.0:5} size=uniform(100,400)
  getset 2 key=cold:{zipf:60000:0.8:5} size=lognormal(7.7,0.5,20000)
}
phase second_half
repeat 50000 {
  getset 8 key=hot:{zipf:40000:1.0:5} size=uniform(100,400)
  getset 2 key=cold:{zipf:60000:0.8:5} size=lognormal(7.7,0.5,20000)
}
