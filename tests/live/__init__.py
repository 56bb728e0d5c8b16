"""Live servers for end-to-end tests: real processes on real sockets, driven by real client libraries."""
