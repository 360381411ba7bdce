//go:build !unix

package role

func netns() string { return "" }
