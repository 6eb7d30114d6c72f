repeat 0 {
set 5 key=z{i} size=1
}
set 0 key=a size=1
phase p
