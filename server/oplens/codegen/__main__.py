"""`python -m oplens.codegen [--check]`: write the extension's generated TypeScript, or check it is fresh."""

from oplens.codegen.generate import main

raise SystemExit(main())
