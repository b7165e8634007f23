module gowalk

go 1.19

require gobucket v0.0.0

replace gobucket => ../gobucket
