module rangefs-stress

go 1.19
