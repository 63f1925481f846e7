# verbs: the programs' common path (rsv-rc: connect, write, read, send).
vb_pair rc rsv-rc
