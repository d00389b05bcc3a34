module github.com/rdmago/rdmago

go 1.26.8
