// Gives the pages the allocator holds free back to the system, now rather than at its own pace:
// after a burst of frees that the work that follows will not reuse (an informer letting go of
// thousands of finished objects after a list), so that the burst does not stay in the resident
// set beside that work. jemalloc (which kuscia-host links by default): every arena purged;
// glibc's malloc: malloc_trim. A call walks every arena: for bursts, not for each event.
#pragma once

namespace kuscia_host {

void returnFreeMemory();

} // namespace kuscia_host
