import React from "react";

type Props = { title: string };

export function Header({ title }: Props) {
  return <h1>{title}</h1>;
}

export class Page extends React.Component<Props> {
  render() {
    return (
      <main>
        <Header title={this.props.title} />
      </main>
    );
  }
}
