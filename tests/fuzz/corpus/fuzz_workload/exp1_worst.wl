# Experiment 1, worst case: 400,000 items each one byte over the 944-byte
# chunk, so every one lands in the next class (1184-byte chunks on the
# default ladder) and wastes 239 bytes. over(12) is computed from the live
# server's ladder and the key length, so it stays right under other flags.
connections 4
pipeline 64
seed 1
phase load
set 400000 key=e1w:{i:6} size=over(12)
