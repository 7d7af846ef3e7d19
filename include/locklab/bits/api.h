/* Support header: users include locklab/locklab.h and the other entry headers, not bits/. */
/*
 * bits/api.h: LL_API marks what liblocklab exports.  The library is built with
 * -fvisibility=hidden, so every function and variable of the public headers
 * carries LL_API, and nothing else (the subsystems' own helpers, the gates'
 * queue, the monitor's records) is visible outside the library.
 */
#ifndef LOCKLAB_API_H
#define LOCKLAB_API_H

#if defined(__GNUC__)
#define LL_API __attribute__((visibility("default")))
#else
#define LL_API
#endif

#endif
