import sys

from healthd.testing.standin_llm import main

sys.exit(main())
