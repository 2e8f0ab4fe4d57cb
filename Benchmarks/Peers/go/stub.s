// Empty: lets main.go declare runtime.nanotime without a body (go:linkname).
