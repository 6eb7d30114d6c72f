# test_experiment.py fixture: one fixed-size plan (byte sizes, not fill/over,
# so it is the same plan under any ladder). Keys are 10 bytes, so the 876-byte
# values make 945-byte items (48 + 10 + 1 + 876 + 2 + 8 CAS): one byte over
# the default ladder's 944 chunk. The 50-byte values make 119-byte items.
connections 2
pipeline 32
seed 7
phase big
set 3000 key=tw:{i:7} size=876
phase small
set 1000 key=ts:{i:7} size=50 flags=0
delete 100 key=ts:{i:7}
phase rewrite
set 500 key=tw:{i%250:7} size=876 noreply
get 300 key=tw:{rand:3000:7}
