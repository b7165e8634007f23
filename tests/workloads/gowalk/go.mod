module gowalk

go 1.19
