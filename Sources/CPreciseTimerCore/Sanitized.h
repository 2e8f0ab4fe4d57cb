#ifndef C_PRECISE_TIMER_CORE_SANITIZED_H
#define C_PRECISE_TIMER_CORE_SANITIZED_H

// Private to the C sources (not in include/): whether this is a build under AddressSanitizer or
// ThreadSanitizer.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define C_PRECISE_TIMER_CORE_SANITIZED 1
#endif
#endif

#endif
