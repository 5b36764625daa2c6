"""Hosts from where users keep them, beside the config's [[hosts]]: an inventory file and the
`Host` entries of an OpenSSH client config; [groups.NAME] defaults fill what they leave out."""
