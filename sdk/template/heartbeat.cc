// heartbeat.cc: the registration; the host loads heartbeat.so and checks this name.
#include "heartbeat.h"

KH_PLUGIN(Heartbeat, "heartbeat", "1.0.0", "a periodic counter")
