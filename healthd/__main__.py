from healthd.cli import main

raise SystemExit(main())
