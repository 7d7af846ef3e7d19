"""The studies' analyses, beside the product: the innodb_thread_concurrency study
reproduced behind admission gates (admission), and the targets set for ll (ll_targets)."""
