#!/usr/bin/env node
// The `mocapi` command (see `mocapi --help`); its code is cli/, built to dist.
import { main, processIo } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2), processIo())
