package origin

import (
	"net/url"
	"testing"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/x":            "http://h:80",
		"HTTP://H:80/":          "http://h:80",
		"https://h":             "https://h:443",
		"http://h:81":           "http://h:81",
		"http://[::1]:8080/mcp": "http://[::1]:8080",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Of(u); got != want {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
}
