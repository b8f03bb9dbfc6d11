#!/usr/bin/env bash
# Runs this crate's fuzz targets for SECONDS each (default 60): see scripts/fuzz.sh and docs/FUZZING.md.
exec "$(dirname "$0")/../../../scripts/fuzz.sh" --crate control "$@"
