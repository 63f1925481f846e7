# verbs: state rules of the post verbs, comp-mask defaults, CQ resize
# under a stream of SENDs into an SRQ, rereg_mr (rsv-verbs; VM 1 holds
# the resized CQ and the re-registered MR, the other VM drives them).
vb_pair verbs rsv-verbs
