from oplens.cli import main

raise SystemExit(main())
