// Registration only: the entry point of sim-agent.so.
#include "sim_agent.h"

KH_PLUGIN(kuscia_host::plugins::sim::SimAgent, "sim-agent", "0.1.0",
          "plays Kuscia's task controller, scheduler, agent and endpoints controller (embedded "
          "setups only)")
