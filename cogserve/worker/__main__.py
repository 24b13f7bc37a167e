from cogserve.worker.main import die_with_parent, main

die_with_parent()
main()
