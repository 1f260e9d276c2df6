module rangefs-conformance

go 1.19
