"""Every SGLang fact that depends on the version: log line grammar (prefixes, batch lines,
startup lines, server_args), /metrics names, flag names per version and known-bad combinations.

logs/, diagnose/, server/, bench/, sim/ and the console read SGLang through this package, so a
new SGLang version is taught in one place.
"""
