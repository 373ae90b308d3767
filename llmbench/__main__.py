from llmbench.cli import main

main()
