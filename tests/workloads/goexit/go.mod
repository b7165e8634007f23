module goexit

go 1.19
