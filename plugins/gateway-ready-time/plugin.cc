// Registration only: the entry point of gateway-ready-time.so.
#include "gateway_ready_time.h"

KH_PLUGIN(kuscia_host::plugins::gateway::GatewayReadyTime, "gateway-ready-time", "0.1.0",
          "writes kuscia.secretflow/ready-time on a service once the gateway has programmed it")
