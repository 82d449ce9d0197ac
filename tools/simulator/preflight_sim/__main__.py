import sys

from preflight_sim.cli import main

sys.exit(main())
