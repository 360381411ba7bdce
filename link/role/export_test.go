package role

// DirFor is dir with the system directory given.
var DirFor = dir
