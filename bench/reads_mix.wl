# A get-heavy pipelined load for docs/recording-reads.md: 20,000 keys
# written once, then 90 % get / 10 % set of 100-byte values drawn at
# random from them, 4 connections, 64 requests in flight each.
connections 4
pipeline 64
seed 11
set 20000 key=rm:{i:5} size=100
repeat 50000 {
  get 9 key=rm:{rand:20000:5}
  set 1 key=rm:{rand:20000:5} size=100
}
