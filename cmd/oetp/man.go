package main

// The man pages in docs/man are generated from the commands' own help by a
// hidden `man` command that only a build with the oetp_man tag has
// (man_cmd.go): the shipped binary does not carry the generator.
//go:generate go run -tags oetp_man . man --dir ../../docs/man
