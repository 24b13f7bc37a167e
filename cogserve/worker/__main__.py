from cogserve.worker.main import main

main()
