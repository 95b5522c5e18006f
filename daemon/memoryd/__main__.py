from memoryd import command

command()
