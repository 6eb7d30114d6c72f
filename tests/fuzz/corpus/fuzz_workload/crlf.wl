set 1 key=a size=1
get 1 key=a
