// Sanitizer builds only: the Vulkan loader unloads the driver and the validation layer when the
// instance goes away, after which LeakSanitizer can no longer tell whose leaks remain and the
// suppressions in lsan.supp cannot match them. Keeping every module loaded keeps leaks attributable.
extern "C" int dlclose(void*) { return 0; }
