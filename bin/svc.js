#!/usr/bin/env node
// Entry point of the `svc` command: the compiled CLI lives in dist/.
import '../dist/src/cli/main.js';
