"""Starting other programs: finding them and checking the loader can preload into them
(program), running them as a shell would and passing on how they ended (process), and
the loopback port a server is started on (net)."""
