"""Generated from proto/toolsvc/v1 by scripts/gen-python.sh. Do not edit."""
