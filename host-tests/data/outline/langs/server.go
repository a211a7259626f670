package server

import "net/http"

// Server serves requests.
type Server struct {
	addr string
}

type Handler func(http.ResponseWriter, *http.Request)

// New makes a server.
// It does not start it.
func New(addr string) *Server {
	return &Server{addr: addr}
}

func (s *Server) Start() error {
	return http.ListenAndServe(s.addr, nil)
}
