"""The console's screens: the dashboard and the views reached from it."""
