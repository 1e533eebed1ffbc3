/** The help of every component's `--v` flag (upstream's klog verbosity). */
export const VERBOSITY_HELP =
  "log verbosity as upstream's --v (JSON lines on stderr; 2 = info, 3-4 debug, 5+ trace); the KubeVirt resource's developerConfiguration.logVerbosity wins while it sets one";
