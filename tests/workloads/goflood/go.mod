module goflood

go 1.19
