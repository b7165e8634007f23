module goalloc

go 1.19
