package cli

import (
	"flag"
	"strings"
)

// parseInterleaved parses args into fs with the flags and the positional
// arguments in any order (`toolsvc task HANDLE --cancel` as well as
// `toolsvc task --cancel HANDLE`), and returns the positional ones in order.
//
// An argument is a flag only when it names one of fs's flags (or is -h /
// -help): anything else that begins with "-" is positional. Task ids and
// handles are base64url, where "-" is a letter (a Python SDK upstream's
// task id begins with it about one time in 64), and a search query may be
// a negative number; flag.FlagSet.Parse alone would refuse either as an
// undefined flag. "--" ends the flags: everything after it is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return append(positional, args[1:]...), nil
		}
		name, hasValue, ok := flagName(a)
		fl := fs.Lookup(name)
		if !ok || (fl == nil && name != "h" && name != "help") {
			positional = append(positional, a)
			args = args[1:]
			continue
		}
		// One flag at a time, with its value when it takes the next
		// argument, so an argument after it is judged by the rule above.
		n := 1
		if !hasValue && fl != nil && !isBoolFlag(fl) && len(args) > 1 {
			n = 2
		}
		if err := fs.Parse(args[:n]); err != nil {
			return nil, err
		}
		args = args[n:]
	}
	return positional, nil
}

// flagName is the name a flag argument ("-x", "--x", "-x=v", "--x=v")
// gives, and whether it carries its value; ok is false for an argument
// that cannot be a flag ("-", "---x", no leading "-").
func flagName(a string) (name string, hasValue, ok bool) {
	switch {
	case strings.HasPrefix(a, "--"):
		name = a[2:]
	case strings.HasPrefix(a, "-"):
		name = a[1:]
	default:
		return "", false, false
	}
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", false, false
	}
	if i := strings.IndexByte(name, '='); i >= 0 {
		name, hasValue = name[:i], true
	}
	return name, hasValue, true
}

func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
