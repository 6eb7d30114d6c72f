# Hit ratio 4: Zipf(1.0) get-or-set over 200,000 keys (ETC sizes) with a
# one-pass scan of 20,000 cold keys (never asked for again) after every
# 100,000 requests, polluting the LRU: how much of the hot set survives.
# Each scan has its own key prefix (scan0..scan9), so each is one pass.
seed 4
connections 4
pipeline 64
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan0:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan1:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan2:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan3:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan4:{i:5} size=etc
phase second_half
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan5:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan6:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan7:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan8:{i:5} size=etc
getset 100000 key=hot:{zipf:200000:1.0:6} size=etc
getset 20000 key=scan9:{i:5} size=etc
