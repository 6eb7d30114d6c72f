# Hit ratio 1: Facebook ETC-like get-or-set. 1.5 M requests, Zipf(1.0)
# popularity over 200,000 keys, ETC value sizes (Generalized Pareto,
# scale 214.476, shape 0.348238, drawn once per key). Measure the hit
# ratio over the second half (phase second_half), once the cache is warm.
seed 1
connections 4
pipeline 64
getset 750000 key=etc:{zipf:200000:1.0:6} size=etc
phase second_half
getset 750000 key=etc:{zipf:200000:1.0:6} size=etc
