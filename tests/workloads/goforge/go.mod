module goforge

go 1.19
