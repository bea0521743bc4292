package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/server"
)

// runConfig runs `toolsvc config check FILE`: the file as serve would load
// it (every problem at once), its serve settings validated, every key
// known (serve only warns of an unknown one: a Claude Desktop file may
// carry other programs' keys), and the settings it sets sorted by whether
// a reload applies a change to them.
func runConfig(args []string) error {
	if len(args) != 2 || args[0] != "check" {
		return &exitError{code: 2, err: errors.New("usage: toolsvc config check FILE")}
	}
	file := args[1]
	c, err := config.Load(file)
	if err != nil {
		return err
	}
	if c.TokenStore != nil {
		if probs := c.TokenStore.CheckFiles(file); len(probs) > 0 {
			return probs
		}
	}
	if len(c.Unknown) > 0 {
		lines := make([]string, len(c.Unknown))
		for i, k := range c.Unknown {
			lines[i] = fmt.Sprintf("%s: unknown key %q: not a setting toolsvc knows (docs/configuration.md, \"Settings\", lists them)", file, k)
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	onReload, onRestart, err := server.Check(c)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, w := range c.Warnings {
		fmt.Println("warning:", w)
	}
	fmt.Printf("%s: ok (%d servers)\n", file, len(c.Bridge.Servers))
	if len(onReload) > 0 {
		fmt.Printf("a reload applies changes to: %s\n", strings.Join(onReload, ", "))
	}
	if len(onRestart) > 0 {
		fmt.Printf("changes need a restart: %s\n", strings.Join(onRestart, ", "))
	}
	return nil
}
